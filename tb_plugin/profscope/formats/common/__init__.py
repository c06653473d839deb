"""What several readers share: protobuf wire decoding, a reader's helper process, opening a file."""
