do
