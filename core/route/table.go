package route

import (
	"fmt"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/rule"
)

// Table is a Router that matches a flow against the user's rules and sends
// it to the outbound or group the matching rule names.
type Table struct {
	rules   *rule.Set
	targets map[string]outbound.Outbound
}

// NewTable returns a Table over rules whose targets are looked up in
// targets (outbounds and groups by name). Every target a rule or the final
// names must exist.
func NewTable(rules *rule.Set, targets map[string]outbound.Outbound) (*Table, error) {
	for _, name := range rules.Targets() {
		if targets[name] == nil {
			return nil, fmt.Errorf("route: rule target %q: no such outbound or group", name)
		}
	}
	return &Table{rules: rules, targets: targets}, nil
}

// Route returns the outbound of the first rule matching m.
func (t *Table) Route(m *flow.Metadata) (outbound.Outbound, string, error) {
	name := t.rules.Match(m)
	return t.targets[name], name, nil
}
