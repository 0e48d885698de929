for i in a
