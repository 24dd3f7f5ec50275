package route

import (
	"fmt"
	"sync/atomic"

	"github.com/skiffvpn/skiff/core/flow"
	"github.com/skiffvpn/skiff/core/outbound"
	"github.com/skiffvpn/skiff/core/rule"
)

// Table is a Router that matches a flow against the user's rules and sends
// it to the outbound or group the matching rule names. Its rules can be
// replaced while flows are routed (a rule set was refreshed); each flow
// sees one table, the old or the new.
type Table struct {
	rules   atomic.Pointer[rule.Set]
	targets map[string]outbound.Outbound
}

// NewTable returns a Table over rules whose targets are looked up in
// targets (outbounds and groups by name). Every target a rule or the final
// names must exist.
func NewTable(rules *rule.Set, targets map[string]outbound.Outbound) (*Table, error) {
	t := &Table{targets: targets}
	if err := t.SetRules(rules); err != nil {
		return nil, err
	}
	return t, nil
}

// SetRules replaces the table's rules, after checking that every target
// they name exists; on error the old rules stay.
func (t *Table) SetRules(rules *rule.Set) error {
	for _, name := range rules.Targets() {
		if t.targets[name] == nil {
			return fmt.Errorf("route: rule target %q: no such outbound or group", name)
		}
	}
	t.rules.Store(rules)
	return nil
}

// Rules returns the rules in use now.
func (t *Table) Rules() *rule.Set { return t.rules.Load() }

// Route returns the outbound of the first rule matching m.
func (t *Table) Route(m *flow.Metadata) (outbound.Outbound, string, error) {
	name := t.rules.Load().Match(m)
	return t.targets[name], name, nil
}
