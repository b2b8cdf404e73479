// Package plural writes counts as a person reads them: "1 key", "2 keys".
package plural

import "fmt"

// Count is any integer a count is held in.
type Count interface {
	~int | ~int32 | ~int64 | ~uint | ~uint32 | ~uint64
}

// Of is n and the noun, in the plural unless n is 1 ("1 key", "2 keys");
// a noun ending in a consonant and y takes -ies ("1 entry", "2 entries").
func Of[N Count](n N, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %s", n, Noun(noun))
}

// Verb is Of followed by the verb that agrees with it ("1 object is",
// "2 objects are").
func Verb[N Count](n N, noun, one, many string) string {
	if n == 1 {
		return Of(n, noun) + " " + one
	}
	return Of(n, noun) + " " + many
}

// Noun is the plural of noun.
func Noun(noun string) string {
	if l := len(noun); l > 1 && noun[l-1] == 'y' && !isVowel(noun[l-2]) {
		return noun[:l-1] + "ies"
	}
	return noun + "s"
}

func isVowel(b byte) bool {
	switch b {
	case 'a', 'e', 'i', 'o', 'u':
		return true
	}
	return false
}

// Pick is one when n is 1, else many: the words around a count that
// agree with it ("its group", "their groups").
func Pick[N Count](n N, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Them is "it" for one, "them" for more: the object of a sentence about n
// things.
func Them[N Count](n N) string { return Pick(n, "it", "them") }

// They is "it" for one, "they" for more: the subject of a sentence about
// n things.
func They[N Count](n N) string { return Pick(n, "it", "they") }

// Be is "is" for one, "are" for more.
func Be[N Count](n N) string { return Pick(n, "is", "are") }
