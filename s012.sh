K 'a
