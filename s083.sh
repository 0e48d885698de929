until a
