#!/usr/bin/env bash
# The import graph of a folder's C files: which file uses which other
# file's functions (calls, or a function named as a callback), and every
# circle (a strongly connected set of more than one file).
#
#   scripts/imports.sh [DIR]        (default: src/runtime)
#
# Prints one line per edge, "a.c -> b.c: f, g" (a uses f and g, defined in
# b), then one line per circle, "circle: a.c b.c ...", or "no circle".
# Definitions come from ctags (functions that are not static); uses are the
# identifiers of each file with its comments and strings removed. Exit
# status 0 either way (it reports; it does not judge).
set -euo pipefail
dir=${1:-src/runtime}
command -v ctags >/dev/null || { echo "imports.sh: ctags is needed (universal-ctags: scripts/deps.sh test)" >&2; exit 1; }
files=$(find "$dir" -maxdepth 1 -name '*.c' | sort)
[[ -n $files ]] || { echo "imports.sh: no .c file in $dir" >&2; exit 1; }
# shellcheck disable=SC2086
ctags -x --c-kinds=f $files | awk '$0 !~ / static / {print $1, $4}' |
  perl -e '
    use strict; use warnings;
    my %def;                                   # function -> file that defines it
    while (<STDIN>) { my ($f, $file) = split; $def{$f} = $file; }
    my (%uses, @files);
    for my $file (@ARGV) {
        push @files, $file;
        local $/; open my $fh, "<", $file or die "$file: $!"; my $s = <$fh>;
        $s =~ s{/\*.*?\*/}{ }gs;             # comments
        $s =~ s{//[^\n]*}{ }g;
        $s =~ s{"(?:\\.|[^"\\])*"}{""}g;       # strings
        $s =~ s{\x27(?:\\.|[^\x27\\])*\x27}{0}g; # characters
        my %seen;
        for my $id ($s =~ /\b([A-Za-z_]\w*)\b/g) {
            next if $seen{$id}++;
            my $to = $def{$id};
            next unless $to && $to ne $file;
            push @{$uses{$file}{$to}}, $id;
        }
    }
    my $base = sub { my $p = shift; $p =~ s{.*/}{}; $p };
    for my $a (@files) {
        for my $b (sort keys %{$uses{$a} // {}}) {
            printf "%s -> %s: %s\n", $base->($a), $base->($b), join(", ", sort @{$uses{$a}{$b}});
        }
    }
    # Tarjan: strongly connected components.
    my ($index, @stack, %on, %idx, %low, @sccs) = (0);
    my $visit; $visit = sub {
        my $v = shift;
        $idx{$v} = $low{$v} = $index++; push @stack, $v; $on{$v} = 1;
        for my $w (sort keys %{$uses{$v} // {}}) {
            if (!exists $idx{$w}) { $visit->($w); $low{$v} = $low{$w} if $low{$w} < $low{$v}; }
            elsif ($on{$w}) { $low{$v} = $idx{$w} if $idx{$w} < $low{$v}; }
        }
        if ($low{$v} == $idx{$v}) {
            my @c; my $w;
            do { $w = pop @stack; $on{$w} = 0; push @c, $w; } while ($w ne $v);
            push @sccs, [sort map { $base->($_) } @c] if @c > 1;
        }
    };
    for my $v (@files) { $visit->($v) unless exists $idx{$v}; }
    if (@sccs) { print "circle: @$_\n" for @sccs; } else { print "no circle\n"; }
  ' $files
