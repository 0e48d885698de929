K "a\
b"
