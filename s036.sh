K ${a b}
