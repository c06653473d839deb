"""HloProtos kept with an XPlane: lazy decoding (`proto`), instructions printed as XLA prints them
(`text`), and the buffer assignment of a program (`buffers`)."""
