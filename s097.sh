( a
