package graph

import (
	"fmt"
	"unicode"
)

// Node is a node of a parsed pattern: a Letter or a Group.
type Node interface{ pos() int }

// Letter is one sublayer, at a 1-based character position.
type Letter struct {
	Pos    int
	Letter byte
}

// Group is (Body)Count, opened at a 1-based character position.
type Group struct {
	Pos   int
	Body  []Node
	Count int
}

func (l Letter) pos() int { return l.Pos }
func (g Group) pos() int  { return g.Pos }

// PatternError is a syntax error at a 1-based character position.
type PatternError struct {
	Pattern string
	Pos     int
	Msg     string
}

func (e *PatternError) Error() string {
	return fmt.Sprintf("pattern %q: position %d: %s", e.Pattern, e.Pos, e.Msg)
}

// MaxRepeat bounds a group's count, so that a typo cannot ask for a
// billion layers.
const MaxRepeat = 1000

// MaxSublayers bounds the expanded pattern: nested groups multiply their
// counts, and ((S)1000)1000 would otherwise ask for a million layers.
const MaxSublayers = 10000

// Parse reads a pattern: letters of Letters, whitespace (ignored), and
// groups (…)N with N >= 1. Every error is a *PatternError.
func Parse(pattern string) ([]Node, error) {
	p := parser{src: []rune(pattern), text: pattern}
	nodes, err := p.sequence(false)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		return nil, &PatternError{pattern, 1, "empty pattern: give at least one letter (" + letterList() + ")"}
	}
	if n := expandedLen(nodes); n > MaxSublayers {
		return nil, &PatternError{pattern, 1, fmt.Sprintf("the pattern expands to more than %d sublayers", MaxSublayers)}
	}
	return nodes, nil
}

// expandedLen is the number of letters nodes expand to, saturating just
// above MaxSublayers.
func expandedLen(nodes []Node) int {
	n := 0
	for _, nd := range nodes {
		switch nd := nd.(type) {
		case Letter:
			n++
		case Group:
			n += expandedLen(nd.Body) * nd.Count
		}
		if n > MaxSublayers {
			return MaxSublayers + 1
		}
	}
	return n
}

type parser struct {
	src  []rune
	text string
	i    int
}

func (p *parser) fail(pos int, format string, args ...any) error {
	return &PatternError{p.text, pos, fmt.Sprintf(format, args...)}
}

// sequence reads nodes up to the end or, inGroup, up to the closing ')'.
func (p *parser) sequence(inGroup bool) ([]Node, error) {
	var nodes []Node
	for p.i < len(p.src) {
		r, pos := p.src[p.i], p.i+1
		switch {
		case unicode.IsSpace(r):
			p.i++
		case r == '(':
			p.i++
			body, err := p.sequence(true)
			if err != nil {
				return nil, err
			}
			if len(body) == 0 {
				return nil, p.fail(pos, "empty group ()")
			}
			n, err := p.count(pos)
			if err != nil {
				return nil, err
			}
			nodes = append(nodes, Group{Pos: pos, Body: body, Count: n})
		case r == ')':
			if !inGroup {
				return nil, p.fail(pos, "')' closes no '('")
			}
			p.i++
			return nodes, nil
		case r < 128 && isLetter(byte(r)):
			nodes = append(nodes, Letter{Pos: pos, Letter: byte(r)})
			p.i++
		case unicode.IsDigit(r):
			return nil, p.fail(pos, "a count must follow a group's ')': write (X)%c, not X%c", r, r)
		default:
			return nil, p.fail(pos, "unknown letter %q (valid: %s, whitespace, (…)N)", r, letterList())
		}
	}
	if inGroup {
		return nil, p.fail(len(p.src)+1, "unbalanced parenthesis: a '(' is never closed")
	}
	return nodes, nil
}

// count reads the repeat count after a group opened at open.
func (p *parser) count(open int) (int, error) {
	start := p.i
	n := 0
	for p.i < len(p.src) && unicode.IsDigit(p.src[p.i]) {
		n = n*10 + int(p.src[p.i]-'0')
		p.i++
		if n > MaxRepeat {
			return 0, p.fail(start+1, "repeat count above %d", MaxRepeat)
		}
	}
	switch {
	case p.i == start:
		return 0, p.fail(start+1, "the group opened at position %d needs a repeat count after ')'", open)
	case n < 1:
		return 0, p.fail(start+1, "repeat count must be >= 1, got %d", n)
	}
	return n, nil
}

// Expand flattens parsed nodes into the sequence of letters.
func Expand(nodes []Node) []byte {
	var out []byte
	for _, n := range nodes {
		switch n := n.(type) {
		case Letter:
			out = append(out, n.Letter)
		case Group:
			body := Expand(n.Body)
			for i := 0; i < n.Count; i++ {
				out = append(out, body...)
			}
		}
	}
	return out
}

// ExpandPattern parses and expands a pattern.
func ExpandPattern(pattern string) ([]byte, error) {
	nodes, err := Parse(pattern)
	if err != nil {
		return nil, err
	}
	return Expand(nodes), nil
}

// CDMoERatio is the count of E over the count of letters (SPEC §4, the
// "MoE ratio" column of Wonderful Matrices Table 2).
func CDMoERatio(letters []byte) float64 {
	if len(letters) == 0 {
		return 0
	}
	e := 0
	for _, l := range letters {
		if l == LetterCDMoE {
			e++
		}
	}
	return float64(e) / float64(len(letters))
}

// isLetter says whether l is a registered sublayer letter.
func isLetter(l byte) bool {
	_, ok := kind(l)
	return ok
}
