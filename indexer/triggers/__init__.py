"""What starts runs: the worker that drains the queue (one cycle per subprocess), the watch
loop over checkouts, the poller of remote sources, and what runs beside `docdex serve`."""
