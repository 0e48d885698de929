K a#b"
