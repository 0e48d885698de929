cat <<E
E\

fi
