K `a

