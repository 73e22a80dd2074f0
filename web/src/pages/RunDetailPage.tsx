export default function RunDetailPage() { return <h1>RunDetail</h1>; }
