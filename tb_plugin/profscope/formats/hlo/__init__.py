"""HloProtos kept with an XPlane: lazy decoding (`proto`) and instructions printed as XLA prints them
(`text`)."""
