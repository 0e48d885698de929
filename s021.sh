K a \
 b
