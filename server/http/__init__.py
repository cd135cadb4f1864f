"""HTTP: the Starlette app `docdex serve` runs under uvicorn, its routes, who may call them
(bind policy, Host and Origin, the bearer token), the connection deadlines and the search
page's files (static/)."""
