cat <<\E
E\

fi
