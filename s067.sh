then
