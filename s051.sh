K

K >
