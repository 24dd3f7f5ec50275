package sysproxy

func osStores(string, runner) []store { return []store{wininet{}} }
