K ${XDG_DATA_HOME}/e
K $HOME/$(id -u)
K ${T:-/tmp}
