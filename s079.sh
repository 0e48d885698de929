if true
then
