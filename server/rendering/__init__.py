"""The search page's rendering of a page: its markdown as HTML, safe whatever the document
holds (renderer.py, adr/0016), what docs generators add to markdown read as what it stands
for (dialects.py), and links written as a docs site's addresses led to the pages the index
holds (site_map.py). It knows nothing of the index: the answers give it a page's text and
the ids of the pages around it (answers/page_views.py). Its modules load markdown-it, which
a server's start does not need: import them when a page is first rendered."""
