package graph

import (
	"fmt"
	"reflect"
)

// Reducer merges an update into the current state and returns the new state. It must not modify
// cur or update in place (other readers may hold them); it is called on one goroutine at a time.
// Appending to a slice of cur is fine — it changes none of the elements others see — since the
// engine merges into each state once: no two states are appended to from the same one.
//
// To keep checkpoints small, a reducer adds what an update holds rather than taking it whole
// (see "Checkpoints, interrupts, resume" in docs/checkpoints.md).
type Reducer[S any] func(cur, update S) S

// Field tags understood by the default reducer, set as `graph:"..."` on fields of the state struct:
//
//	graph:"append"   slices: the update's elements are appended
//	graph:"merge"    maps: the update's entries are added, replacing entries with the same key
//	graph:"last"     any type: as with no tag, and several tasks of one superstep may set it: the
//	                 last of them in frontier order wins
//	(no tag)         any type: the update's value replaces the current one when it is not the zero
//	                 value; it keeps one value per superstep, so two tasks of one superstep that
//	                 both set it fail the run with an *InvalidUpdateError instead of losing one
//
// A field that must be settable to its zero value can be a pointer.
const (
	tagAppend = "append"
	tagMerge  = "merge"
	tagLast   = "last"
)

type fieldOp uint8

const (
	opReplace fieldOp = iota
	opAppend
	opMerge
)

type fieldPlan struct {
	index int
	op    fieldOp
	one   bool // the field keeps one value per superstep (no tag)
	name  string
}

// oneValue finds a field that several updates of one superstep set although it keeps one value:
// it returns the field's name ("" for a state that is not a struct) and the indexes of the
// updates that set it, or no indexes. update(i) points to the i-th of n updates.
type oneValue[S any] func(n int, update func(i int) *S) (field string, setBy []int)

// tagReducer builds the default reducer for S from its struct tags, and the check that no two
// updates of a superstep set a field that keeps one value. A state that is not a struct is
// replaced by any non-zero update (maps are merged and slices appended); it keeps one value.
func tagReducer[S any]() (Reducer[S], oneValue[S], error) {
	t := reflect.TypeFor[S]()
	if t.Kind() != reflect.Struct {
		op := opReplace
		switch t.Kind() {
		case reflect.Map:
			op = opMerge
		case reflect.Slice:
			op = opAppend
		}
		reduce := func(cur, update S) S {
			// Through pointers, so that an interface type S holding nil is a zero Value, not an
			// invalid one.
			c, u := reflect.ValueOf(&cur).Elem(), reflect.ValueOf(&update).Elem()
			c.Set(reduceValue(c, u, op))
			return cur
		}
		if op != opReplace {
			return reduce, nil, nil
		}
		return reduce, func(n int, update func(int) *S) (string, []int) {
			var setBy []int
			for i := range n {
				if !reflect.ValueOf(update(i)).Elem().IsZero() {
					setBy = append(setBy, i)
				}
			}
			if len(setBy) < 2 {
				return "", nil
			}
			return "", setBy
		}, nil
	}
	var plan []fieldPlan
	for i := range t.NumField() {
		f := t.Field(i)
		tag := f.Tag.Get("graph")
		if tag == "-" {
			continue
		}
		if !f.IsExported() {
			return nil, nil, fmt.Errorf("graph: state %s: field %s is unexported, so the default reducer cannot merge it; export it, tag it `graph:\"-\"`, or set a reducer", t, f.Name)
		}
		op, one := opReplace, false
		switch tag {
		case "":
			one = true
		case tagLast:
		case tagAppend:
			if f.Type.Kind() != reflect.Slice {
				return nil, nil, fmt.Errorf("graph: state %s: field %s has tag %q but is a %s, not a slice", t, f.Name, tag, f.Type)
			}
			op = opAppend
		case tagMerge:
			if f.Type.Kind() != reflect.Map {
				return nil, nil, fmt.Errorf("graph: state %s: field %s has tag %q but is a %s, not a map", t, f.Name, tag, f.Type)
			}
			op = opMerge
		default:
			return nil, nil, fmt.Errorf("graph: state %s: field %s has unknown tag graph:%q (want append, merge, last or -)", t, f.Name, tag)
		}
		plan = append(plan, fieldPlan{index: i, op: op, one: one, name: f.Name})
	}
	reduce := func(cur, update S) S {
		c := reflect.ValueOf(&cur).Elem()
		u := reflect.ValueOf(&update).Elem()
		for _, p := range plan {
			uf := u.Field(p.index)
			if uf.IsZero() {
				continue
			}
			cf := c.Field(p.index)
			cf.Set(reduceValue(cf, uf, p.op))
		}
		return cur
	}
	var ones []fieldPlan
	for _, p := range plan {
		if p.one {
			ones = append(ones, p)
		}
	}
	if len(ones) == 0 {
		return reduce, nil, nil
	}
	return reduce, func(n int, update func(int) *S) (string, []int) {
		first := make([]int, len(ones)) // the first update that set each field, plus one
		for i := range n {
			v := reflect.ValueOf(update(i)).Elem()
			for j, p := range ones {
				if v.Field(p.index).IsZero() {
					continue
				}
				if first[j] == 0 {
					first[j] = i + 1
					continue
				}
				setBy := []int{first[j] - 1}
				for k := i; k < n; k++ {
					if !reflect.ValueOf(update(k)).Elem().Field(p.index).IsZero() {
						setBy = append(setBy, k)
					}
				}
				return p.name, setBy
			}
		}
		return "", nil
	}, nil
}

func reduceValue(cur, update reflect.Value, op fieldOp) reflect.Value {
	if update.IsZero() {
		return cur
	}
	switch op {
	case opAppend:
		return reflect.AppendSlice(cur, update)
	case opMerge:
		merged := reflect.MakeMapWithSize(cur.Type(), cur.Len()+update.Len())
		for it := cur.MapRange(); it.Next(); {
			merged.SetMapIndex(it.Key(), it.Value())
		}
		for it := update.MapRange(); it.Next(); {
			merged.SetMapIndex(it.Key(), it.Value())
		}
		return merged
	}
	return update
}
