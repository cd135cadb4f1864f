"""What every docdex process shares at run time: logging set-up and progress display."""
