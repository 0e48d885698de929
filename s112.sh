cat <<E )
x
E
