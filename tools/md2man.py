#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# md2man: turns a manual page written in a small subset of Markdown (docs/ndmem.1.md, which reads
# as a page of the docs on its own) into man(7) roff, at build time, with the standard library
# only (no pandoc or ronn to install). The subset, and nothing else:
#   # NAME(SECTION) -- summary        the first line: .TH and the NAME section
#   ## HEADING / ### Heading          .SH / .SS
#   a paragraph                       .PP; a line ending in two spaces breaks the line (.br)
#   - `--opt=ARG`: text               .TP with the code span as the tag (continuation lines are
#                                     indented by two spaces)
#   - text                            a bullet (.IP)
#   ``` ... ```                       a literal block (.nf, indented)
#   `code`, **bold**, *italic*, [text](link) inline (the link's target is dropped)
# Anything else is an error, so a page cannot silently render wrong.
# usage: md2man.py INPUT.md OUTPUT VERSION
import re
import sys


def esc(text):
    """Roff-escapes plain text (no inline markup)."""
    return text.replace('\\', '\\e').replace('-', '\\-')


def inline(text):
    out, pos = [], 0
    for m in re.finditer(r'`([^`]+)`|\*\*([^*]+)\*\*|\*([^*\s][^*]*)\*|\[([^\]]+)\]\([^)]+\)', text):
        out.append(esc(text[pos:m.start()]))
        if m.group(1) is not None:
            out.append('\\fB' + esc(m.group(1)) + '\\fR')
        elif m.group(2) is not None:
            out.append('\\fB' + inline(m.group(2)) + '\\fR')
        elif m.group(3) is not None:
            out.append('\\fI' + inline(m.group(3)) + '\\fR')
        else:
            out.append(inline(m.group(4)))
        pos = m.end()
    out.append(esc(text[pos:]))
    return ''.join(out)


def line_out(text):
    """One output line of text: a leading dot or quote would be read as a request."""
    return '\\&' + text if text[:1] in ('.', "'") else text


def convert(src, version):
    lines = src.split('\n')
    m = re.match(r'^# ([a-z0-9_-]+)\((\d)\) -- (.+)$', lines[0])
    if not m:
        raise SystemExit('md2man: the first line must be "# name(N) -- summary"')
    name, section, summary = m.groups()
    out = ['.\\" Generated from docs/%s.%s.md by tools/md2man.py; edit that file.' % (name, section),
           '.TH %s %s "" "ndmem %s" "User Commands"' % (name.upper(), section, version),
           '.nh', '.ad l',  # no hyphenation, no justification: names and paths stay whole
           '.SH NAME', '%s \\- %s' % (esc(name), inline(summary))]
    i, para = 1, []

    def flush():
        if para:
            out.append('.PP')
            for k, p in enumerate(para):
                brk = p.endswith('  ')
                out.append(line_out(inline(p.strip())))
                if brk and k + 1 < len(para):
                    out.append('.br')
            para.clear()

    while i < len(lines):
        line = lines[i]
        i += 1
        if not line.strip():
            flush()
        elif line.startswith('```'):
            flush()
            out += ['.PP', '.RS 4', '.nf']
            while i < len(lines) and not lines[i].startswith('```'):
                out.append(line_out(esc(lines[i])))
                i += 1
            if i >= len(lines):
                raise SystemExit('md2man: a code block is not closed')
            i += 1
            out += ['.fi', '.RE']
        elif line.startswith('### '):
            flush()
            out.append('.SS ' + inline(line[4:].strip()))
        elif line.startswith('## '):
            flush()
            out.append('.SH ' + inline(line[3:].strip()).upper())
        elif line.startswith('#'):
            raise SystemExit('md2man: line %d: only ## and ### headings after the title' % i)
        elif line.startswith('- '):
            flush()
            item = [line[2:]]
            while i < len(lines) and lines[i].startswith('  ') and lines[i].strip():
                item.append(lines[i].strip())
                i += 1
            text = ' '.join(item)
            tm = re.match(r'^`([^`]+)`((?:, `[^`]+`)*)(?:( ?)\*([^*]+)\*)?: (.*)$', text)
            if tm:
                tag = '\\fB' + esc(tm.group(1)) + '\\fR'
                for extra in re.findall(r'`([^`]+)`', tm.group(2)):
                    tag += ', \\fB' + esc(extra) + '\\fR'
                if tm.group(4):
                    tag += tm.group(3) + '\\fI' + esc(tm.group(4)) + '\\fR'
                out += ['.TP', line_out(tag), line_out(inline(tm.group(5)))]
            else:
                out += ['.IP \\(bu 2', line_out(inline(text))]
        elif line.startswith(('|', '>', '<', '*', '+', '1.')):
            raise SystemExit('md2man: line %d: not in the subset md2man reads: %s' % (i, line))
        else:
            para.append(line)
    flush()
    return '\n'.join(out) + '\n'


def main():
    if len(sys.argv) != 4:
        raise SystemExit('usage: md2man.py INPUT.md OUTPUT VERSION')
    with open(sys.argv[1], encoding='utf-8') as f:
        roff = convert(f.read(), sys.argv[3])
    with open(sys.argv[2], 'w', encoding='utf-8') as f:
        f.write(roff)


if __name__ == '__main__':
    main()
