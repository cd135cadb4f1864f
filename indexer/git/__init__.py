"""The git layer: branches, file lists, tree diffs, markdown blobs, symlinks and page dates.

Everything goes through dulwich (no `git` subprocess), so a bare repository, a checkout
and a local mirror of a remote are read the same way. Object ids cross this package's
boundary as hex strings and paths as repo-relative POSIX strings. Each module has one job:
`repo` opens repositories and looks objects up, `trees` reads raw tree objects, `diffs`
lists and diffs the files a source's globs select (index-format's `globs`), `blobs` decodes
markdown, `links` follows symlinks and `history` dates pages.
"""
