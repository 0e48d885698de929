K a;#b"
