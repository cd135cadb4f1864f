"""A source's side of a run: its repository (a bare repo, a checkout, a mirror of a remote),
its refs, and what changed since the indexed state, from commits or a working tree, with how
to read each new file and the files its includes name."""
