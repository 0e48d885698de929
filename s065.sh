! a
time -p a | b
!
