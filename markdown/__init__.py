"""What docs generators add to markdown, known to both sides: the dialects the chunker leaves
out of the text it indexes and the page view renders, and the parser both use."""
