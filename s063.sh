a &&
b
