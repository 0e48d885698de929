# a \
fi
