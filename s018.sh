K $"a"
