K a #b"
