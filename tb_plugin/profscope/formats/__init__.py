"""One reader per input format; each turns a file into the common columnar model."""
