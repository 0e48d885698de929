K $'a\'b'
