K 'a
b'
