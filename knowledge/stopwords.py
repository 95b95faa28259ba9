"""Words that say nothing about what a visitor wants to know, in the agent's languages (English,
German, French, Spanish): function words and chat filler ("hi", "please", "tell me").

They are removed from a message before it is matched against the index, on both backends.
PostgreSQL's language configurations drop function words themselves, but not filler, and not
in documents indexed with ``simple``; SQLite's FTS5 drops nothing.
"""

_EN = """
a about above after again against all also am an and any are aren't as at be because been before
being below between both but by can can't cannot could couldn't did didn't do does doesn't doing
don't down during each either else ever every few for from further get gets getting got had
hadn't has hasn't have haven't having he her here hers herself him himself his how i i'd i'll
i'm i've if in into is isn't it it's its itself just let let's like may me might more most much
must my myself need no nor not now of off on once only or other ought our ours ourselves out
over own per please same shall she should shouldn't so some such than that that's the their
theirs them themselves then there there's these they they're this those through to too under
until up upon us very via was wasn't we we're were weren't what what's when where which while
who whom whose why will with won't would wouldn't yes yet you you'd you'll you're you've your
yours yourself yourselves
hi hello hey thanks thank thx ok okay cool great sure hmm um uh well really actually maybe
tell know want wanted wondering wonder question questions ask asking anyone someone something
anything thing things explain info information help please pls wanna gonna kind sort bit lot
"""

_DE = """
aber alle allem allen aller alles als also am an ander andere anderem anderen anderer anderes
auch auf aus bei bin bis bist da damit dann das dass dem den denn der des dessen die dies diese
diesem diesen dieser dieses doch dort du durch ein eine einem einen einer eines er es etwas euch
euer eure für gibt hab habe haben hat hatte hier hin ich ihr ihre im in ist ja jede jedem jeden
jeder jedes kann kannst kein keine können könnte man manche mein meine mich mir mit muss nach
nicht nichts noch nun nur ob oder ohne sehr sein seine sich sie sind so soll sollte um und uns
unser unsere unter viel vom von vor war waren was weil welche welchen welcher welches wenn wer
werde werden wie wieder will wir wird wo wollen würde zu zum zur über
hallo danke bitte gerne okay frage fragen wissen möchte möchten gern mal eigentlich
"""

_FR = """
à ai aie aient aies ait as au aucun aussi autre aux avec avez avoir avons c ça ce ceci cela ces
cet cette ceux chaque ci comme comment d dans de des donc dont du elle elles en encore est et
étaient était être eu eux fait faut il ils j je l la le les leur leurs lui m ma mais me même mes
moi mon n ne ni nos notre nous on ont ou où par pas peu peut peux plus pour pourquoi qu quand que
quel quelle quelles quels qui s sa sans se ses si son sont sur t ta te tes toi ton tous tout
toute toutes tu un une vos votre vous y
bonjour salut merci svp voudrais veux savoir question
"""

_ES = """
a al algo algunas algunos ante antes como con contra cual cuando de del desde donde dos el él
ella ellas ellos en entre era es esa esas ese eso esos esta está están estas este esto estos
fue ha hay la las le les lo los más me mi mis mucho muy nada ni no nos nosotros o os otra otro
para pero poco por porque puede qué que quien se sea ser si sí sin sobre su sus también tanto
te tengo ti tiene tienen todo todos tu tus un una uno unos usted ustedes vosotros y ya yo
hola gracias favor quiero quisiera saber pregunta
"""

STOPWORDS = frozenset(word for table in (_EN, _DE, _FR, _ES) for word in table.split())
