f() a
