K "a
b"
