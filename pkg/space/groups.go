package space

import (
	"bytes"
	"cmp"
	"slices"

	"github.com/regghost/regghost/pkg/catalog"
)

// split returns the resource (the storage prefix below prefix, such as
// "configmaps" or "example.com/widgets") and the namespace of key, both
// parts of key; outside is set for a key outside prefix. A cluster-scoped
// key, or one whose path does not parse, has no namespace.
func split(prefix string, key []byte) (res, ns []byte, outside bool) {
	if !bytes.HasPrefix(key, []byte(prefix)) {
		return nil, nil, true
	}
	rest := key[len(prefix):]
	first := rest
	if i := bytes.IndexByte(rest, '/'); i >= 0 {
		first = rest[:i]
	}
	n := catalog.PrefixSegments(string(first))
	pos, end := 0, len(rest)
	for range n {
		j := bytes.IndexByte(rest[pos:], '/')
		if j < 0 {
			return rest, nil, false
		}
		end = pos + j
		pos = end + 1
	}
	res, obj := rest[:end], rest[pos:]
	if j := bytes.IndexByte(obj, '/'); j > 0 && j+1 < len(obj) && bytes.IndexByte(obj[j+1:], '/') < 0 {
		ns = obj[:j]
	}
	return res, ns, false
}

// groups counts usage by name: resources or namespaces.
type groups map[string]*Group

// at returns the group of name, made when new. Looking up a []byte as a
// string does not copy it; only a new name is copied.
func (g groups) at(name []byte) *Group {
	if x, ok := g[string(name)]; ok {
		return x
	}
	x := &Group{Name: string(name)}
	g[x.Name] = x
	return x
}

// ranked lists the groups, most bytes (values and history) first.
func (g groups) ranked() []Group {
	out := make([]Group, 0, len(g))
	for _, x := range g {
		out = append(out, *x)
	}
	slices.SortFunc(out, func(a, b Group) int {
		if c := cmp.Compare(b.AllBytes(), a.AllBytes()); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

// tally is usage by resource and namespace, with the total.
type tally struct {
	prefix     string
	resources  groups
	namespaces groups
	total      Usage
	outside    Usage
}

func newTally(prefix string) *tally {
	return &tally{prefix: prefix, resources: groups{}, namespaces: groups{}}
}

// add counts u under key's resource and namespace.
func (t *tally) add(key []byte, u Usage) {
	t.total.add(u)
	res, ns, outside := split(t.prefix, key)
	if outside {
		t.outside.add(u)
		t.resources.at([]byte(OutsidePrefix)).add(u)
		return
	}
	t.resources.at(res).add(u)
	if len(ns) > 0 {
		t.namespaces.at(ns).add(u)
	}
}

// addGhost counts u as ghosts' under key's resource and namespace.
func (t *tally) addGhost(key []byte, u Usage) {
	res, ns, outside := split(t.prefix, key)
	if outside {
		return
	}
	t.resources.at(res).Ghost.add(u)
	if len(ns) > 0 {
		t.namespaces.at(ns).Ghost.add(u)
	}
}
