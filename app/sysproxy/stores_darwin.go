package sysproxy

func osStores(_ string, run runner) []store { return []store{networksetup{tools{run: run}}} }
