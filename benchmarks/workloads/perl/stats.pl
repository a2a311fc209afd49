use strict; use warnings;
my ($mode) = @ARGV;
if ($mode eq 'A') {
    my %n; while (<STDIN>) { $n{$1}++ if /" (\d{3}) / } print "$_ $n{$_}\n" for sort keys %n;
} else {
    require JSON::PP; require File::Find; require File::Path;
    my %bytes; File::Find::find(sub { return unless /\.log$/; open my $fh, '<', $_ or die;
        while (<$fh>) { $bytes{$1} += $2 if m{GET /(\w+)/\d+ .*" \d{3} (\d+)} } }, 'logs');
    File::Path::make_path('out/json');
    open my $out, '>', 'out/json/bytes.json' or die;
    print $out JSON::PP->new->canonical->encode(\%bytes); close $out;
    printf "%d sections, %d bytes\n", scalar keys %bytes, -s 'out/json/bytes.json';
}
