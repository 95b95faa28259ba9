"""The words ``agent.contact`` reads contact details with, in the seven languages the agent
speaks (en, de, fr, es, it, pt, nl): how people introduce themselves, name their employer and
their job, sign a message, and say that an address is someone else's.

Written from the languages' grammar and common usage, never from an evaluation case
(docs/agent.md, "Contact details"). All words are lower case; matching ignores case.
"""

from __future__ import annotations


def _words(text: str) -> frozenset[str]:
    """A set of words written as a paragraph: easier to read and extend than a list."""
    return frozenset(text.split())


# --- introductions -------------------------------------------------------------------------------

# Phrases after which only a name can follow: a name in lower case is still a name here.
NAME_IS = (
    "my name is", "my name's", "name's", "my name:", "i'm called", "i am called",
    "mein name ist", "mein name lautet", "mein name:", "ich heiße", "ich heisse", "ich heiß",
    "je m'appelle", "je m’appelle", "mon nom est", "mon nom c'est", "mon prénom est",
    "je me nomme",
    "me llamo", "mi nombre es", "mi nombre:",
    "mi chiamo", "il mio nome è", "il mio nome e'", "il mio nome:",
    "chamo-me", "me chamo", "eu me chamo", "meu nome é", "o meu nome é", "meu nome e",
    "mijn naam is", "ik heet", "mijn naam:",
)
# Phrases after which a name may follow, or anything else ("I'm interested"): only a
# capitalised word that is no common word, title or nationality is taken as a name.
I_AM = (
    "i'm", "i’m", "i am", "this is", "ich bin", "moi c'est", "moi c’est", "je suis", "yo soy",
    "soy", "io sono", "sono", "eu sou", "sou", "ik ben",
)
# Of those, the ones that open other sentences as often ("this is great", "this is Salesforce"):
# a name after them must be followed by an employer, a comma or the end of the sentence.
WEAK_I_AM = frozenset({"this is"})
# At the start of a sentence only: the subject left out, as in chat ("bin Anna von Acme").
I_AM_BARE = ("bin",)
# Articles between an introduction and a title: "I'm the CEO", "je suis la directrice".
ARTICLES = frozenset({
    "the", "a", "an", "der", "die", "das", "ein", "eine", "le", "la", "l'", "l’", "un", "une",
    "el", "una", "uno", "il", "lo", "o", "um", "uma", "de", "het", "een",
})
# The definite ones, which may stand before a company's name ("bei der Acme AG", "bij de
# Rabobank"); after an indefinite one comes no name ("une PME", "a small bakery").
DEFINITE_ARTICLES = frozenset({
    "the", "der", "die", "das", "dem", "den", "le", "la", "l'", "l’", "les", "el", "il", "lo",
    "de", "het",
})
# Words after a name that make it an introduction: "Jordan here", "Jens hier von Acme".
HERE = frozenset({"here", "hier", "ici", "aquí", "aqui", "qui"})
# Courtesy words before a name, dropped from it ("Herr Maier").
COURTESY = frozenset({
    "mr", "mr.", "mrs", "mrs.", "ms", "ms.", "miss", "herr", "frau", "m.", "mme", "mme.",
    "monsieur", "madame", "sr.", "sra.", "señor", "señora", "sig.", "sig.ra", "signor",
    "signora", "sr", "sra", "dhr.", "mevr.", "mw.",
})
# Academic titles, kept with the name as people sign with them ("Dr. Eva Roth").
ACADEMIC = frozenset({"dr.", "dr", "prof.", "prof", "dott.", "dott.ssa", "ing.", "ir.", "drs.",
                      "mag.", "dipl.-ing.", "lic."})
# Lower-case words inside a name: "Ana da Silva", "Jan van der Berg", "Karl von Stein".
NAME_PARTICLES = frozenset({
    "de", "da", "das", "do", "dos", "di", "del", "della", "van", "von", "der", "den", "ter",
    "ten", "te", "le", "la", "du", "des", "zu", "y", "e", "'t", "bin", "al", "el",
})

# Words that follow "I'm", "ich bin", "je suis", "soy", "sono", "sou", "ik ben" and are not
# names: adjectives, participles, adverbs, common nouns (German capitalises them), pronouns.
NOT_NAMES = _words("""
interested looking trying not the a an from at with here there just very so also ready happy
curious wondering calling writing currently evaluating in on sure fine good ok okay new glad
sorry afraid aware able unable busy back still only really actually already about going
getting planning hoping thinking considering searching working based responsible
in charge keen excited confused lost stuck done finished open unsure certain positive late
early available free online away out pleased delighted thrilled concerned worried surprised
impressed disappointed frustrated tired fed one part member customer client user fan big huge
small little reaching following checking exploring comparing researching shopping reading
thanks thank hi hello hey yes no well new here's there's wondering gathering collecting
the buyer someone somebody nobody anyone everybody everyone myself also both either neither
american british english canadian australian irish scottish welsh german french spanish
italian portuguese dutch belgian swiss austrian brazilian mexican argentinian chilean
colombian indian chinese japanese korean european african asian polish swedish danish
norwegian finnish russian ukrainian turkish greek israeli
interessiert neu kunde kundin neukunde neukundin bestandskunde student studentin auf am im
gerade auch noch schon sehr nicht kein keine ganz etwas bisschen froh gespannt neugierig
unsicher sicher dabei hier da zuständig verantwortlich selbstständig selbständig
freiberufler freiberuflerin teil mitglied anfänger anfängerin laie fan meinung ansicht
auffassung überzeugung urlaub büro unterwegs interessent interessentin vater mutter
entwickler entwicklerin der die das ein eine einer mal wieder eigentlich leider total
ansprechpartner ansprechpartnerin praktikant praktikantin azubi werkstudent werkstudentin
mitarbeiter mitarbeiterin angestellter angestellte unternehmer unternehmerin freelancer
designer designerin programmierer lehrer lehrerin arzt ärztin anwalt anwältin makler
maklerin händler händlerin rentner rentnerin verantwortlicher verantwortliche zuständiger
zuständige nutzer nutzerin anwender anwenderin besitzer besitzerin eigentümer
eigentümerin betreiber betreiberin partner partnerin selbstständiger kollege kollegin
sales support info contact team marketing admin office hello
kunden neukunden bestandskunden nutzer anwender händler hersteller anbieter dienstleister
interessenten mitglieder kollegen partner startup agentur firma unternehmen verein
customers clients users partners members resellers
look click see check come stay sign read start go tap scroll schau klick guck regarde
cliquez voir mira haz pulsa guarda clicca olha clique veja kijk klik
deutscher deutsche österreicher österreicherin schweizer schweizerin
intéressé intéressée curieux curieuse nouveau nouvelle client cliente content contente ravi
ravie désolé désolée sûr sûre pas en à au dans sur très aussi déjà encore un une le la les
là ici chargé chargée seul seule perdu perdue prêt prête occupé occupée disponible français
française belge suisse canadien canadienne
interesado interesada nuevo nueva cliente curioso curiosa de del en el la una un muy también
ya aquí allí feliz contento contenta seguro segura listo lista encargado encargada nuevo
español española mexicano mexicana argentino argentina colombiano colombiana chileno chilena
interessato interessata curioso curiosa nuovo nuova cliente di del della in a al alla qui
qua molto anche già felice contento contenta sicuro sicura pronto pronta stato stata appena
solo sola italiano italiana svizzero svizzera
interessado interessada novo nova cliente curioso curiosa dono dona de da do em na no um uma
muito também já aqui feliz contente seguro segura pronto pronta só português portuguesa
brasileiro brasileira
geïnteresseerd benieuwd nieuw nieuwe klant van bij in op de het een erg heel ook al nog hier
daar blij zeker klaar bezig alleen net zelf nederlander nederlandse belg vlaming
""")
# Nouns that end words that are not names ("Ich bin Berater", "ich bin der Meinung").
NOT_NAME_ENDINGS = ("ung", "heit", "keit", "schaft", "tät", "ismus", "ment", "tion", "sion")

# Function words that end a name, a company or a title written in lower case.
STOP_WORDS = _words("""
and or but with from at in on for of to by as is are was be am i we you he she they it my our
your his her their me us this that these those here there and so then also too because if
when where how what who which btw
und oder aber mit von bei aus in im am an auf für zu als ist sind bin ich wir sie er es mein
meine unser unsere hier da dann auch weil wenn wie was wer der die das dem den
et ou mais avec de du des chez à au aux en dans pour par est suis je nous vous il elle mon ma
ma mes notre nos ici là et puis aussi parce que si quand comment qui
y o pero con de del en para por es soy yo nosotros usted mi mis nuestro nuestra aquí
e o ma con di da del della in per è sono io noi mio mia nostro nostra qui qua
e ou mas com de da do em na no para por é sou eu nós meu minha nosso nossa aqui
en of maar met van bij in op voor te is ben ik wij we jij mijn onze hier daar ook
""")

# --- employers --------------------------------------------------------------------------------

# After a name given in an introduction: "I'm Ana from Acme", "ich bin Jan von Acme".
NAME_COMPANY_PREPOSITIONS = frozenset({
    "from", "at", "with", "of", "von", "bei", "chez", "de", "d'", "d’", "en", "di", "da", "do",
    "na", "no", "presso", "van", "bij",
})
# After a job title: "CTO at Acme", "Leiter Marketing bei der Acme AG", "diretora da Acme".
TITLE_COMPANY_PREPOSITIONS = frozenset({
    "at", "of", "with", "for", "@", "bei", "von", "der", "chez", "de", "d'", "d’", "du", "à",
    "en", "del", "di", "presso", "della", "dello", "da", "do", "na", "no", "em", "bij", "van",
    "voor",
})
# Verbs of working somewhere, with the preposition that names the employer.
WORK_AT = (
    "i work at", "i work for", "i work with", "working at", "working for", "i'm with",
    "i am with", "we're with", "i'm at", "i am at", "i'm over at",
    "ich arbeite bei", "ich arbeite für", "arbeite bei", "arbeite für", "ich bin bei",
    "ich komme von", "tätig bei",
    "je travaille chez", "je travaille pour", "je travaille à", "je bosse chez", "je suis chez",
    "travaille chez",
    "trabajo en", "trabajo para", "trabajo con", "trabajamos en",
    "lavoro per", "lavoro presso", "lavoro da", "lavoro alla", "lavoro nella", "lavoro in",
    "lavoro con",
    "trabalho na", "trabalho no", "trabalho em", "trabalho para", "trabalho pela",
    "trabalho pelo", "estou na", "estou no",
    "ik werk bij", "ik werk voor", "werk bij", "werk voor", "ik zit bij", "werkzaam bij",
)
# A company's own name: "a company called Acme", "unsere Firma heißt Acme".
CALLED = (
    "called", "named", "namens", "genannt", "appelée", "appelé", "nommée", "llamada", "llamado",
    "chiamata", "chiamato", "chamada", "chamado", "genaamd",
)
COMPANY_NOUNS = frozenset({
    "company", "firm", "business", "startup", "agency", "shop", "store", "firma", "unternehmen",
    "agentur", "laden", "société", "entreprise", "boîte", "agence", "boutique", "empresa",
    "compañía", "agencia", "tienda", "azienda", "società", "ditta", "agenzia", "negozio",
    "agência", "loja", "bedrijf", "bureau", "winkel", "zaak",
})
COMPANY_IS = (
    "heißt", "heisst", "heet", "s'appelle", "s’appelle", "se llama", "si chiama", "chama-se",
    "se chama", "is", "ist", "est", "es", "è", "é",
)
# "We're Acme": the visitor's company speaking.
WE_ARE = ("we are", "we're", "wir sind", "nous sommes", "somos", "siamo", "wij zijn", "we zijn")
# Words that open a company's name and are not one: "at Monday", "from Germany".
NOT_COMPANIES = _words("""
i we the a an my our monday tuesday wednesday thursday friday saturday sunday hello hi thanks
montag dienstag mittwoch donnerstag freitag samstag sonntag lundi mardi mercredi jeudi
vendredi samedi dimanche lunes martes miércoles jueves viernes sábado domingo lunedì martedì
mercoledì giovedì venerdì sabato domenica segunda-feira terça-feira quarta-feira
quinta-feira sexta-feira sábado maandag dinsdag
woensdag donderdag vrijdag zaterdag zondag
january february march april may june july august september october november december
januar februar märz juni juli oktober dezember janvier février mars avril mai juin juillet
août septembre octobre novembre décembre enero febrero marzo abril mayo junio julio agosto
septiembre octubre noviembre diciembre gennaio febbraio aprile maggio giugno luglio settembre
ottobre dicembre janeiro fevereiro março maio junho julho setembro outubro novembro dezembro
januari februari maart mei augustus
germany deutschland france spain españa italy italia portugal brazil brasil netherlands
nederland holland belgium belgië belgique austria österreich switzerland schweiz suisse
europe europa usa america uk england london berlin paris madrid rome roma lisbon lisboa
amsterdam munich münchen hamburg vienna wien zurich zürich barcelona milan milano
lyon marseille toulouse bordeaux lille nantes strasbourg bruxelles brussels brussel antwerpen
köln cologne frankfurt stuttgart düsseldorf dresden leipzig valencia sevilla seville bilbao
málaga porto braga coimbra napoli naples torino turin firenze florence bologna venezia venice
rotterdam utrecht eindhoven groningen dublin edinburgh manchester new york
linkedin google twitter facebook instagram youtube reddit
home work vacation holiday arbeit urlaub hause travail vacances casa trabajo vacaciones lavoro
ferie trabalho férias werk vakantie thuis
""")
# Legal forms that end a company's name, even after a comma: "Acme, Inc.", "Silva & Filhos, Lda.".
LEGAL_FORMS = (
    "inc.", "inc", "llc", "ltd.", "ltd", "limited", "corp.", "corp", "co.", "co", "plc", "llp",
    "gmbh", "ag", "kg", "ohg", "gbr", "ug", "e.k.", "e.v.", "mbh", "se",
    "sa", "s.a.", "sas", "s.a.s.", "sarl", "s.a.r.l.", "eurl", "sasu", "sl", "s.l.", "slu",
    "s.l.u.", "s.a.u.", "srl", "s.r.l.", "spa", "s.p.a.", "snc", "sas", "lda", "lda.",
    "ltda", "ltda.", "me", "eireli", "bv", "b.v.", "nv", "n.v.", "vof", "v.o.f.", "cv",
    "oy", "ab", "as", "a/s", "aps", "sprl", "bvba",
)
# Lower-case words inside a company's name: "Banco do Brasil", "Silva & Filhos".
COMPANY_JOINERS = frozenset({
    "&", "and", "und", "et", "y", "e", "of", "de", "des", "du", "do", "da", "di", "del",
    "della", "dei", "van", "der", "den", "von", "für", "for", "the", "la", "le", "les", "el",
    "'s", "d'", "d’", "l'", "l’", "-",
})

# --- job titles ---------------------------------------------------------------------------------

# Nouns of a job; the starred ones say nothing alone ("I'm responsible", "the head of it"):
# they need a field after them ("Head of Sales", "responsable marketing", "hoofd inkoop").
ROLES = _words("""
ceo cto cfo coo cmo cro cio ciso cpo cso cdo chro vp svp evp avp founder co-founder cofounder
owner co-owner president chairman chairwoman chair director manager officer coordinator
specialist analyst consultant engineer developer administrator buyer controller accountant
executive strategist representative
geschäftsführer geschäftsführerin geschaftsfuhrer inhaber inhaberin gründer gründerin
mitgründer mitgründerin mitinhaber mitinhaberin prokurist prokuristin vorstand vorständin
direktor direktorin managerin einkäufer einkäuferin berater beraterin referent referentin
koordinator koordinatorin
pdg dg président présidente directeur directrice gérant gérante fondateur fondatrice
cofondateur cofondatrice co-fondateur co-fondatrice propriétaire acheteur acheteuse
dirigeant dirigeante consultante ingénieur ingénieure daf drh dsi
directora gerente jefe jefa fundador fundadora cofundador cofundadora dueño dueña
propietario propietaria presidenta coordinador coordinadora consejero consejera comprador
compradora consultor consultora
direttore direttrice amministratore amministratrice titolare fondatore cofondatore
cofondatrice coordinatore coordinatrice dirigente consulente
diretor diretora sócio-gerente dono dona proprietário proprietária coordenador coordenadora
administrador administradora
eigenaar eigenaresse oprichter medeoprichter mede-oprichter bedrijfsleider teamleider
zaakvoerder inkoper adviseur
""")
ROLES_NEEDING_A_FIELD = _words("""
head lead leiter leiterin chef chefin chargé chargée responsable encargado encargada
responsabile capo responsável chefe hoofd
""")
# German and Dutch write titles as one word: "Vertriebsleiter", "Marketingmanagerin",
# "salesmanager", "projectleider". Words that end so and are no title: "Halbleiter".
ROLE_ENDINGS = ("leiter", "leiterin", "manager", "managerin", "chef", "chefin", "direktor",
                "direktorin", "directeur", "leider", "berater", "beraterin", "referent",
                "referentin", "koordinator", "koordinatorin")
NOT_ROLES = frozenset({"halbleiter", "begleiter", "begleiterin", "wegbegleiter", "blitzableiter",
                       "küchenchef", "leider"})
# Words before the noun of a title: "Senior Marketing Manager", "commercieel directeur".
TITLE_QUALIFIERS = _words("""
senior junior chief regional global deputy associate executive general interim acting
managing national international key account area principal lead group vice assistant
kaufmännischer kaufmännische technischer technische stellvertretender stellvertretende
leitender leitende
commercieel commerciële algemeen algemene technisch technische adjunct
""")
# Fields of work, before or after the noun of a title: "Head of Operations", "Leiter Marketing",
# "responsable marketing digital", "diretora de vendas".
TITLE_FIELDS = _words("""
marketing sales operations ops it ict procurement purchasing finance financial product
products engineering growth hr people talent customer customers success service services
support business development partnerships revenue digital e-commerce ecommerce online
communications communication technology tech strategy design data analytics security legal
compliance logistics supply chain administration admin accounts brand content demand
generation innovation research quality production manufacturing facilities training learning
infrastructure systems information retail wholesale export sourcing category channel field
inside enterprise emea dach europe apac americas team project projects program office
commercial technical general procurement it-
vertrieb vertriebs verkauf einkauf finanzen personal produktion logistik kundenservice
kundendienst technik entwicklung controlling buchhaltung digitalisierung kommunikation
unternehmenskommunikation innendienst außendienst aussendienst qualitätsmanagement betrieb
geschäftsentwicklung beschaffung vertriebes marketings einkaufs
commerciale général générale technique financier financière numérique opérations ventes
achats informatique administratif administrative rh ressources humaines clientèle client
clients grands comptes logistique produit projet projets développement partenariats relation
commerciaux régional régionale systèmes digitale
comercial técnico técnica financiero financiera ventas operaciones compras sistemas recursos
humanos tecnología logística administración informática expansión producto proyectos cuentas
negocio desarrollo innovación calidad producción exportación comunicación
vendite acquisti generale tecnico amministrativo amministrativa finanziario finanziaria
operativo operativa logistica digitale personale risorse umane qualità sviluppo progetto
progetti informativi comunicazione innovazione
vendas operações financeiro financeira geral ti tecnologia negócios desenvolvimento inovação
qualidade produção comunicação projetos
verkoop inkoop financiën financieel logistiek klantenservice personeelszaken communicatie
productie ontwikkeling innovatie
""")
# Words that join a title's noun to its field: "Head of Sales", "directeur des ventes".
TITLE_JOINERS = frozenset({"of", "for", "de", "des", "du", "d'", "d’", "del", "de la", "della",
                           "dell'", "di", "dei", "delle", "do", "da", "dos", "das", "der", "van",
                           "voor", "la", "&", "and", "und", "et", "y", "e", "en"})
# Verbs of having a job: "I work as", "ich arbeite als", "je travaille comme".
WORK_AS = ("i work as", "working as", "as", "ich arbeite als", "arbeite als", "als",
           "je travaille comme", "en tant que", "en tant qu'", "trabajo como", "como",
           "lavoro come", "come", "trabalho como", "ik werk als", "werkzaam als")

# --- signatures ---------------------------------------------------------------------------------

# A line of its own that closes a message: what follows is a signature.
SIGN_OFFS = frozenset(phrase.strip() for phrase in " | ".join((
    "-- | --- | — | __",
    "best | best regards | kind regards | warm regards | warmest regards | regards | cheers",
    "many thanks | thanks | thank you | thanks again | thanks in advance | sincerely",
    "yours sincerely | yours truly | all the best | best wishes | talk soon | speak soon",
    "mit freundlichen grüßen | mit freundlichen grüssen | freundliche grüße | beste grüße",
    "freundliche grüsse | beste grüsse | viele grüße | viele grüsse | liebe grüße | grüße",
    "herzliche grüße | schöne grüße | gruß | mfg | lg | vg | danke | vielen dank",
    "besten dank | mit besten grüßen | mit herzlichen grüßen",
    "cordialement | bien cordialement | très cordialement | bien à vous | salutations",
    "sincères salutations | meilleures salutations | merci | merci beaucoup | amicalement",
    "bonne journée | belle journée",
    "saludos | un saludo | saludos cordiales | un cordial saludo | atentamente | cordialmente",
    "gracias | muchas gracias | un abrazo | quedo atento | quedo atenta",
    "cordiali saluti | distinti saluti | saluti | un saluto | un caro saluto | grazie",
    "grazie mille | buona giornata | a presto",
    "atenciosamente | cumprimentos | melhores cumprimentos | com os melhores cumprimentos",
    "obrigado | obrigada | abraço | um abraço | abs | att | saudações | grato | grata",
    "met vriendelijke groet | met vriendelijke groeten | vriendelijke groet | groet | groeten",
    "vriendelijke groeten | hartelijke groet | hartelijke groeten | mvg | groetjes | bedankt",
    "dank je | dank je wel | dank u | dank u wel | alvast bedankt",
)).split("|"))
# Labels before a number in a signature: "Tel.", "Mobile:", "Handy", "Tél", "Cel".
PHONE_LABELS = _words("""
tel tel. t t. phone ph ph. mobile mob mob. m m. cell cell. direct office fon telefon handy
mobil mobilnummer tél tél. portable téléphone teléfono telefono móvil movil cel cel. celular
telefone telemóvel telemovel cellulare tel.: telefoon mobiel gsm whatsapp
""")

# --- someone else's address, or a wrong one -------------------------------------------------------

# Possessives that make the person after them someone other than the visitor.
MY = _words("""
my our mein meine meinem meinen meiner unser unsere unserem unseren unserer mon ma mes notre
nos mi mis nuestro nuestra nuestros nuestras mio mia miei mie nostro nostra meu minha meus
minhas nosso nossa mijn onze ons
""")
# Who such a possessive may name: "my colleague", "unsere Chefin", "mon associé".
OTHER_PEOPLE = _words("""
colleague colleagues coworker co-worker boss manager assistant partner wife husband team ceo
cto cfo founder cofounder co-founder director head lead supervisor buyer accountant associate
kollege kollegin kollegen chef chefin vorgesetzter vorgesetzte assistent assistentin
geschäftsführer geschäftsführerin partnerin frau mann team buchhaltung
collègue collègues patron patronne chef responsable associé associée assistant assistante
directeur directrice femme mari équipe comptable
compañero compañera colega colegas jefe jefa socio socia asistente director directora
esposa esposo marido equipo contable
collega colleghi capo responsabile socio socia assistente direttore direttrice moglie
marito squadra commercialista
colega colegas chefe sócio sócia assistente diretor diretora esposa marido equipa equipe
contabilista contador
collega collega's baas leidinggevende manager assistent assistente directeur partner vrouw
man team boekhouder
""")
# Pronouns of a third person before an address: "his email", "sa mail", "ihre Adresse"
# (German "Ihre", polite "your", is left out).
THEIR = _words("""
his her their sein seine seiner seinem son sa ses leur leurs suo sua dele dela deles delas
zijn haar hun
""")
# Words that mark an address as the wrong one: "not x@y", "instead of x@y".
NOT_THIS = (
    "not", "instead of", "rather than", "nicht", "statt", "anstatt", "anstelle von", "pas",
    "au lieu de", "plutôt que", "no", "en vez de", "en lugar de", "non", "invece di",
    "anziché", "não", "em vez de", "ao invés de", "niet", "in plaats van",
)
COPY = ("cc", "cc:", "bcc", "in kopie", "en copie", "en copia", "in copia", "em cópia", "in de cc")
