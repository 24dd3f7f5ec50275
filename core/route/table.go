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
// replaced while flows are routed (a rule set was refreshed), and set
// aside for other rules (Override: everything one way); each flow sees one
// set, the old or the new.
type Table struct {
	rules    atomic.Pointer[rule.Set]
	override atomic.Pointer[rule.Set] // nil: rules
	targets  map[string]outbound.Outbound
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

// Override routes new flows by set instead of the rules (which stay, and
// go on being replaced by SetRules) until Override(nil). Every target set
// names must exist.
func (t *Table) Override(set *rule.Set) error {
	if set != nil {
		if err := t.check(set); err != nil {
			return err
		}
	}
	t.override.Store(set)
	return nil
}

// InForce returns the set that routes new flows now: the override, else
// the rules.
func (t *Table) InForce() *rule.Set {
	if o := t.override.Load(); o != nil {
		return o
	}
	return t.rules.Load()
}

func (t *Table) check(rules *rule.Set) error {
	for _, name := range rules.Targets() {
		if t.targets[name] == nil {
			return fmt.Errorf("route: rule target %q: no such outbound or group", name)
		}
	}
	return nil
}

// SetRules replaces the table's rules, after checking that every target
// they name exists; on error the old rules stay.
func (t *Table) SetRules(rules *rule.Set) error {
	if err := t.check(rules); err != nil {
		return err
	}
	t.rules.Store(rules)
	return nil
}

// Rules returns the rules (overridden or not).
func (t *Table) Rules() *rule.Set { return t.rules.Load() }

// Route returns the outbound of the first rule in force matching m.
func (t *Table) Route(m *flow.Metadata) (outbound.Outbound, string, error) {
	name := t.InForce().Match(m)
	return t.targets[name], name, nil
}
