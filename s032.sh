K $(a
b
