#!/usr/bin/perl
# The figures of mrskew's default table, computed with Perl's own double
# arithmetic, for the hand-made traces of skew's rounding tests.
#
#   perl mrskew_figures.pl [--top=N] [--precision=P] FILE...
#
# Reads the WAIT lines (value: ela) and the dep=0 database calls (value: c)
# of each file in turn, groups them by name, and prints the table as
# `tracelab skew --csv` does: one row per group (duration descending, ties
# in order of first appearance), `N others` past --top, then TOTAL.
#
# The arithmetic is mrskew's, as tracelab reproduces it: a value is the
# trace's integer times 1e-6; a group's duration is the running sum of its
# values in read order; TOTAL's is the running sum of every value; `N
# others` adds the folded groups' durations in their sorted order; a mean
# is a duration over its calls; a percentage is a duration over TOTAL's,
# times 100; printf rounds each double.
use strict;
use warnings;

my ($top, $p) = (10, 6);
my @files;
for (@ARGV) {
    if (/^--top=(\d+)$/) { $top = $1 }
    elsif (/^--precision=(\d+)$/) { $p = $1 }
    else { push @files, $_ }
}
my (%sum, %n, %min, %max, @order);
my $total = 0;
for my $f (@files) {
    open my $fh, '<', $f or die "$f: $!\n";
    while (<$fh>) {
        my ($name, $raw);
        if (/^WAIT #\d+: nam='([^']*)' ela= (-?\d+)/) { ($name, $raw) = ($1, $2) }
        elsif (/^(PARSE|EXEC|FETCH|CLOSE) #\d+:c=(-?\d+),.*\bdep=0\b/) { ($name, $raw) = ($1, $2) }
        else { next }
        my $v = $raw * 1e-6;
        push @order, $name unless exists $n{$name};
        $sum{$name} += $v;
        $n{$name}++;
        $total += $v;
        $min{$name} = $v if !defined $min{$name} || $v < $min{$name};
        $max{$name} = $v if !defined $max{$name} || $v > $max{$name};
    }
}
my %first;
@first{@order} = 0 .. $#order;
my @sorted = sort { $sum{$b} <=> $sum{$a} or $first{$a} <=> $first{$b} } @order;
my $shown = ($top == 0 || @sorted <= $top + 1) ? @sorted : $top;
my $fmt = "%s,%.${p}f,%.1f,%d,%.${p}f,%.${p}f,%.${p}f\n";
print "CALL-NAME,DURATION,%,CALLS,MEAN,MIN,MAX\n";
for my $g (@sorted[0 .. $shown - 1]) {
    printf $fmt, $g, $sum{$g}, $sum{$g} / $total * 100, $n{$g}, $sum{$g} / $n{$g}, $min{$g}, $max{$g};
}
if ($shown < @sorted) {
    my ($s, $c, $lo, $hi) = (0, 0);
    for my $g (@sorted[$shown .. $#sorted]) {
        $s += $sum{$g};
        $c += $n{$g};
        $lo = $min{$g} if !defined $lo || $min{$g} < $lo;
        $hi = $max{$g} if !defined $hi || $max{$g} > $hi;
    }
    printf $fmt, scalar(@sorted) - $shown . ' others', $s, $s / $total * 100, $c, $s / $c, $lo, $hi;
}
my ($c, $lo, $hi) = (0);
for my $g (@order) {
    $c += $n{$g};
    $lo = $min{$g} if !defined $lo || $min{$g} < $lo;
    $hi = $max{$g} if !defined $hi || $max{$g} > $hi;
}
printf $fmt, 'TOTAL (' . scalar(@order) . ')', $total, 100, $c, $total / $c, $lo, $hi;
