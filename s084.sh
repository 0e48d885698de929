for i in a b; do c; done
for i; do c; done
for i do c; done
