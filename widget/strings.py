"""The widget's own words (docs/widget.md, "Languages"): what ``static/widget/widget.js`` writes
itself, in the languages the agent speaks (``core.languages.SPOKEN``), sent with its
configuration in the visitor's language.

English is also written in widget.js (its ``L`` table), so that the widget has words before the
configuration comes and when it cannot come; the two English tables are kept equal by
tests/widget/test_languages.py. Every language has every key, with the same ``{n}``
placeholder (a number or a name). The register is the formal one of each language, as the
agent's (``agent.phrases``); Portuguese is European, as the agent's.

The default title and greeting are the widget's words too: a tenant that kept them gets them in
the visitor's language (``localized_look``); a tenant's own are its own, shown as written.
"""

from __future__ import annotations

import re

from core.languages import SPOKEN

from .models import DEFAULT_GREETING, DEFAULT_TITLE

NBSP = "\u00a0"  # French puts one before ? ! : (a narrow one would do; this one renders everywhere)

STRINGS: dict[str, dict[str, str]] = {
    "en": {
        "open": "Open chat",
        "openN": "Open chat ({n} new)",
        "close": "Close chat",
        "log": "Conversation",
        "msg": "Your message",
        "ph": "Type your message…",
        "send": "Send message",
        "before": "Before you chat",
        "policy": "Privacy policy",
        "accept": "Accept",
        "you": "You: ",
        "bot": "Assistant: ",
        "chips": "Suggested replies",
        "lost": "Not delivered · ",
        "retry": "Retry",
        "retryIn": "Retry in {n} s",
        "dots": "The assistant is typing",
        "failed": "Sorry, the reply could not be completed. Please try again.",
        "cut": "The reply was interrupted. Please try again.",
        "ended": "This conversation has ended. Send a message to start a new one.",
        "back": "You are chatting with our assistant again.",
        "typing": "{n} is typing…",
        "off": "This chat isn't available.",
        "rate": "How was this conversation?",
        "good": "Good",
        "bad": "Bad",
        "note": "Anything to add? (optional)",
        "noteSend": "Send",
        "thanks": "Thank you for your feedback!",
        "dismiss": "Dismiss",
        "attach": "Attach a file (image or PDF)",
        "fileNo": ("This file can't be sent: only PNG, JPEG, GIF, WebP or PDF files "
                   "within the size limit."),
    },
    "de": {
        "open": "Chat öffnen",
        "openN": "Chat öffnen (neue Nachrichten: {n})",
        "close": "Chat schließen",
        "log": "Unterhaltung",
        "msg": "Ihre Nachricht",
        "ph": "Nachricht eingeben…",
        "send": "Nachricht senden",
        "before": "Bevor Sie chatten",
        "policy": "Datenschutzerklärung",
        "accept": "Akzeptieren",
        "you": "Sie: ",
        "bot": "Assistent: ",
        "chips": "Antwortvorschläge",
        "lost": "Nicht zugestellt · ",
        "retry": "Erneut senden",
        "retryIn": "Erneut senden in {n} s",
        "dots": "Der Assistent schreibt",
        "failed": "Die Antwort konnte leider nicht fertiggestellt werden. Bitte versuchen Sie es noch einmal.",
        "cut": "Die Antwort wurde unterbrochen. Bitte versuchen Sie es noch einmal.",
        "ended": "Diese Unterhaltung ist beendet. Schreiben Sie uns, um eine neue zu beginnen.",
        "back": "Sie schreiben jetzt wieder mit unserem Assistenten.",
        "typing": "{n} schreibt…",
        "off": "Dieser Chat ist nicht verfügbar.",
        "rate": "Wie zufrieden waren Sie mit diesem Gespräch?",
        "good": "Zufrieden",
        "bad": "Nicht zufrieden",
        "note": "Möchten Sie noch etwas ergänzen? (optional)",
        "noteSend": "Senden",
        "thanks": "Vielen Dank für Ihr Feedback!",
        "dismiss": "Ausblenden",
        "attach": "Datei anhängen (Bild oder PDF)",
        "fileNo": ("Diese Datei kann nicht gesendet werden: nur PNG, JPEG, GIF, WebP oder PDF "
                   "innerhalb der Größenbeschränkung."),
    },
    "fr": {
        "open": "Ouvrir le chat",
        "openN": f"Ouvrir le chat (nouveaux messages{NBSP}: {{n}})",
        "close": "Fermer le chat",
        "log": "Conversation",
        "msg": "Votre message",
        "ph": "Écrivez votre message…",
        "send": "Envoyer le message",
        "before": "Avant de commencer",
        "policy": "Politique de confidentialité",
        "accept": "J’accepte",
        "you": f"Vous{NBSP}: ",
        "bot": f"Assistant{NBSP}: ",
        "chips": "Réponses suggérées",
        "lost": "Non envoyé · ",
        "retry": "Réessayer",
        "retryIn": "Réessayer dans {n} s",
        "dots": "L’assistant écrit",
        "failed": "Désolés, la réponse n’a pas pu aboutir. Veuillez réessayer.",
        "cut": "La réponse a été interrompue. Veuillez réessayer.",
        "ended": "Cette conversation est terminée. Écrivez-nous pour en commencer une nouvelle.",
        "back": "Vous discutez de nouveau avec notre assistant.",
        "typing": "{n} est en train d’écrire…",
        "off": "Ce chat n’est pas disponible.",
        "rate": f"Comment s’est passée cette conversation{NBSP}?",
        "good": "Bien",
        "bad": "Pas bien",
        "note": f"Un commentaire{NBSP}? (facultatif)",
        "noteSend": "Envoyer",
        "thanks": f"Merci pour votre avis{NBSP}!",
        "dismiss": "Masquer",
        "attach": "Joindre un fichier (image ou PDF)",
        "fileNo": ("Ce fichier ne peut pas être envoyé" + NBSP + ": uniquement PNG, JPEG, GIF, WebP "
                   "ou PDF, dans la limite de taille."),
    },
    "es": {
        "open": "Abrir el chat",
        "openN": "Abrir el chat (mensajes nuevos: {n})",
        "close": "Cerrar el chat",
        "log": "Conversación",
        "msg": "Su mensaje",
        "ph": "Escriba su mensaje…",
        "send": "Enviar mensaje",
        "before": "Antes de empezar",
        "policy": "Política de privacidad",
        "accept": "Aceptar",
        "you": "Usted: ",
        "bot": "Asistente: ",
        "chips": "Respuestas sugeridas",
        "lost": "No enviado · ",
        "retry": "Reintentar",
        "retryIn": "Reintentar en {n} s",
        "dots": "El asistente está escribiendo",
        "failed": "Lo sentimos, no hemos podido completar la respuesta. Inténtelo de nuevo.",
        "cut": "La respuesta se ha interrumpido. Inténtelo de nuevo.",
        "ended": "Esta conversación ha terminado. Escríbanos para empezar una nueva.",
        "back": "Vuelve a hablar con nuestro asistente.",
        "typing": "{n} está escribiendo…",
        "off": "Este chat no está disponible.",
        "rate": "¿Qué le ha parecido esta conversación?",
        "good": "Bien",
        "bad": "Mal",
        "note": "¿Quiere añadir algo? (opcional)",
        "noteSend": "Enviar",
        "thanks": "¡Gracias por su opinión!",
        "dismiss": "Descartar",
        "attach": "Adjuntar un archivo (imagen o PDF)",
        "fileNo": ("No se puede enviar este archivo: solo PNG, JPEG, GIF, WebP o PDF "
                   "dentro del límite de tamaño."),
    },
    "it": {
        "open": "Apri la chat",
        "openN": "Apri la chat (nuovi messaggi: {n})",
        "close": "Chiudi la chat",
        "log": "Conversazione",
        "msg": "Il Suo messaggio",
        "ph": "Scriva un messaggio…",
        "send": "Invia il messaggio",
        "before": "Prima di iniziare",
        "policy": "Informativa sulla privacy",
        "accept": "Accetto",
        "you": "Lei: ",
        "bot": "Assistente: ",
        "chips": "Risposte suggerite",
        "lost": "Non inviato · ",
        "retry": "Riprova",
        "retryIn": "Riprova tra {n} s",
        "dots": "L’assistente sta scrivendo",
        "failed": "Non è stato possibile completare la risposta. La preghiamo di riprovare.",
        "cut": "La risposta si è interrotta. La preghiamo di riprovare.",
        "ended": "Questa conversazione è terminata. Ci scriva per iniziarne una nuova.",
        "back": "Sta di nuovo parlando con il nostro assistente.",
        "typing": "{n} sta scrivendo…",
        "off": "Questa chat non è disponibile.",
        "rate": "Com’è andata questa conversazione?",
        "good": "Bene",
        "bad": "Male",
        "note": "Vuole aggiungere qualcosa? (facoltativo)",
        "noteSend": "Invia",
        "thanks": "Grazie per il Suo riscontro!",
        "dismiss": "Chiudi",
        "attach": "Allega un file (immagine o PDF)",
        "fileNo": ("Impossibile inviare questo file: solo PNG, JPEG, GIF, WebP o PDF "
                   "entro il limite di dimensione."),
    },
    "pt": {
        "open": "Abrir o chat",
        "openN": "Abrir o chat (mensagens novas: {n})",
        "close": "Fechar o chat",
        "log": "Conversa",
        "msg": "A sua mensagem",
        "ph": "Escreva a sua mensagem…",
        "send": "Enviar mensagem",
        "before": "Antes de começar",
        "policy": "Política de privacidade",
        "accept": "Aceitar",
        "you": "Você: ",
        "bot": "Assistente: ",
        "chips": "Respostas sugeridas",
        "lost": "Não enviada · ",
        "retry": "Tentar de novo",
        "retryIn": "Tentar de novo em {n} s",
        "dots": "O assistente está a escrever",
        "failed": "Lamentamos, não foi possível concluir a resposta. Tente de novo.",
        "cut": "A resposta foi interrompida. Tente de novo.",
        "ended": "Esta conversa terminou. Escreva-nos para começar uma nova.",
        "back": "Está de novo a falar com o nosso assistente.",
        "typing": "{n} está a escrever…",
        "off": "Este chat não está disponível.",
        "rate": "Como correu esta conversa?",
        "good": "Bem",
        "bad": "Mal",
        "note": "Quer acrescentar alguma coisa? (opcional)",
        "noteSend": "Enviar",
        "thanks": "Obrigado pela sua opinião!",
        "dismiss": "Dispensar",
        "attach": "Anexar um ficheiro (imagem ou PDF)",
        "fileNo": ("Não é possível enviar este ficheiro: apenas PNG, JPEG, GIF, WebP ou PDF "
                   "dentro do limite de tamanho."),
    },
    "nl": {
        "open": "Chat openen",
        "openN": "Chat openen (nieuwe berichten: {n})",
        "close": "Chat sluiten",
        "log": "Gesprek",
        "msg": "Uw bericht",
        "ph": "Typ uw bericht…",
        "send": "Bericht versturen",
        "before": "Voordat u begint",
        "policy": "Privacyverklaring",
        "accept": "Akkoord",
        "you": "U: ",
        "bot": "Assistent: ",
        "chips": "Voorgestelde antwoorden",
        "lost": "Niet verzonden · ",
        "retry": "Opnieuw proberen",
        "retryIn": "Opnieuw proberen over {n} s",
        "dots": "De assistent is aan het typen",
        "failed": "Sorry, het antwoord kon niet worden afgerond. Probeer het opnieuw.",
        "cut": "Het antwoord werd onderbroken. Probeer het opnieuw.",
        "ended": "Dit gesprek is afgesloten. Stuur ons een bericht om een nieuw gesprek te beginnen.",
        "back": "U chat weer met onze assistent.",
        "typing": "{n} is aan het typen…",
        "off": "Deze chat is niet beschikbaar.",
        "rate": "Hoe tevreden bent u over dit gesprek?",
        "good": "Tevreden",
        "bad": "Niet tevreden",
        "note": "Wilt u nog iets toevoegen? (optioneel)",
        "noteSend": "Versturen",
        "thanks": "Bedankt voor uw feedback!",
        "dismiss": "Verbergen",
        "attach": "Bestand bijvoegen (afbeelding of pdf)",
        "fileNo": ("Dit bestand kan niet worden verzonden: alleen PNG, JPEG, GIF, WebP of pdf "
                   "binnen de maximale grootte."),
    },
}

# The widget's default title and greeting, in each language (see the module's docstring).
DEFAULTS: dict[str, tuple[str, str]] = {
    "en": (DEFAULT_TITLE, DEFAULT_GREETING),
    "de": ("Chatten Sie mit uns", "Hallo! Wie können wir Ihnen helfen?"),
    "fr": ("Discutons ensemble", f"Bonjour{NBSP}! Comment pouvons-nous vous aider{NBSP}?"),
    "es": ("Hable con nosotros", "¡Hola! ¿En qué podemos ayudarle?"),
    "it": ("Chatta con noi", "Salve! Come possiamo aiutarLa?"),
    "pt": ("Fale connosco", "Olá! Em que podemos ajudar?"),
    "nl": ("Chat met ons", "Hallo! Waarmee kunnen we u helpen?"),
}

_TAG = re.compile(r"^[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{1,8})*$")
MAX_TAGS = 10


def widget_language(requested: str | None) -> str:
    """The widget's language for ``requested``: a comma-separated list of language tags, best
    first (the ``language`` option, then the browser's ``navigator.languages``). The first whose
    base language (``pt`` of ``pt-BR``, ``de`` of ``de-AT``) the widget speaks wins; English
    when none does."""
    for tag in (requested or "").split(",")[:MAX_TAGS]:
        tag = tag.strip()
        if _TAG.match(tag):
            base = re.split(r"[-_]", tag, maxsplit=1)[0].lower()
            if base in SPOKEN:
                return base
    return "en"


def widget_strings(language: str) -> dict[str, str]:
    return STRINGS.get(language) or STRINGS["en"]


def localized_look(title: str, greeting: str, language: str) -> tuple[str, str]:
    """The title and greeting the widget shows: the widget's defaults in ``language``, a
    tenant's own words as written."""
    en_title, en_greeting = DEFAULTS["en"]
    title_l, greeting_l = DEFAULTS.get(language) or DEFAULTS["en"]
    return (title_l if title == en_title else title,
            greeting_l if greeting == en_greeting else greeting)
