{ a
