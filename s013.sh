K "a\"b"
