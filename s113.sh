K "$(cat <<E
x
E
)"
